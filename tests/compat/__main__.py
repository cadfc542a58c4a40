from tests.compat.cli import main

raise SystemExit(main())
