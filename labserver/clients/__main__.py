"""`python -m labserver.clients STRATEGY URL ...`: one client run in its own process (see strategies)."""

import sys

from labserver.clients.strategies import main

sys.exit(main())
