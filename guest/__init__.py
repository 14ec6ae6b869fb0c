"""Code that runs inside the sandbox: the prelude, the tool proxies and the snippet runner.

Nothing here runs on the host except `guest._allowlist`, which the host reads to describe
what a snippet may import. `guest.main` is the component's entry point; it is imported once,
at build time, and snapshotted into the component by componentize-py.
"""
