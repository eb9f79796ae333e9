import sys

if sys.version_info < (3, 11):  # the agent installs on 3.9; the exporter needs 3.11
    sys.exit(
        "gpu exporter: needs Python 3.11 or later and "
        "pip install 'eks-gpu-insights-agent[exporter]' (the exporter's image has both)"
    )

from gpu_insights_agent.exporter.cli import main

sys.exit(main())
