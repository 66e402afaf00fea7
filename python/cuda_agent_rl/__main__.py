"""``python -m cuda_agent_rl``: the GRPO demonstration (see ``grpo``)."""

import sys

from cuda_agent_rl.grpo import main

sys.exit(main())
