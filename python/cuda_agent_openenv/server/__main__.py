import sys

from cuda_agent_openenv.server.app import main

sys.exit(main())
