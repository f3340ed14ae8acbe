"""`python -m specviz`: the six demonstrations as text tables (see specviz.cli)."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())
