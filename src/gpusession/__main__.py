"""``python -m gpusession``: same as the ``gpusession`` console script."""

from gpusession.cli import main

raise SystemExit(main())
