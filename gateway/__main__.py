"""`python -m gateway` is the `codemode-gateway` command."""

from gateway._cli import main

main()
