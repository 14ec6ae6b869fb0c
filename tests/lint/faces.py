"""An import-linter contract: outside a wing, code imports only the wing's face.

A wing is a subpackage of `gateway` (`gateway.sandbox`); its face is its `__init__` and its public
modules (`gateway.sandbox.limits`). Any module with an underscore-led name inside it is private to
the wing: importing it from elsewhere couples the two wings' insides, which the layering cannot see.
"""

from __future__ import annotations

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields, output


class FacesContract(Contract):
    """Each listed wing's private modules are imported only from inside that wing."""

    type_name = "faces"
    wings = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        violations: list[str] = []
        for wing in sorted(self.wings):  # type: ignore[attr-defined]
            for module in sorted(graph.find_descendants(wing)):
                inner = module.removeprefix(wing + ".").split(".")
                if not any(part.startswith("_") for part in inner):
                    continue
                for importer in sorted(graph.find_modules_that_directly_import(module)):
                    if importer == wing or importer.startswith(wing + "."):
                        continue
                    for detail in graph.get_import_details(importer=importer, imported=module):
                        violations.append(
                            f"{importer} (line {detail['line_number']}) imports {module}: "
                            f"import it from the face, {wing}"
                        )
        return ContractCheck(kept=not violations, metadata={"violations": violations})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for violation in check.metadata["violations"]:
            output.print_error(violation, bold=False)
            output.new_line()
