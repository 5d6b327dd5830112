"""ren-inspect: the command-line face of `ren.viz` (see `ren_cli.main`)."""
