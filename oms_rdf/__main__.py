"""Run the command line: ``python -m oms_rdf``."""

from .cli import main

main()
