"""``python -m ren_cli`` runs ren-inspect."""

from ren_cli.main import main

main()
