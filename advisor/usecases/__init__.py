"""Use cases: what each command does, between the Typer CLI and the pure layers.

A use case loads (``advisor.loading``), evaluates (``advisor.core``) and builds the document
a renderer prints (``advisor.render``); the CLI only parses arguments, picks the format and
writes the output. Nothing here reads argv or writes to a terminal.

* :mod:`.recommend` — one workload file → its recommendation document (``recommend``,
  ``check``);
* :mod:`.calibrate` — the instance and token budget that served benchmark runs, and the fit;
* :mod:`.launch` — the launch plan (instances, budgets, sequence caps, checkpoint) that
  ``--emit`` prints for a recommendation.
"""
