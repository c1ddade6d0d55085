from clincite.users.store import main

raise SystemExit(main())
