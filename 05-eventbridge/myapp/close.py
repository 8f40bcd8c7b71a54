"""When the leaderboard's week closes, in the app's time zone: "FRI 18:00" unless configured."""

import os
from datetime import time

_day, _at = os.environ.get("LEADERBOARD_CLOSE", "FRI 18:00").split()
CLOSE_DAY = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN").index(_day)
CLOSE_AT = time.fromisoformat(_at)
