"""`python -m gateway` is the `codemode-gateway` command."""

from gateway.cli import main

main()
