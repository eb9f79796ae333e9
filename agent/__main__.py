import sys

from agent.exporter_cli import main

sys.exit(main())
