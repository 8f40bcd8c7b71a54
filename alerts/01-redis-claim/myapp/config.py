import os

ALERT_WEBHOOK_URL = os.environ["ALERT_WEBHOOK_URL"]
SANDBOX_API_URL = os.environ["SANDBOX_API_URL"]
REPLICA = os.environ.get("REPLICA", "?")
HTTP_TIMEOUT_S = 10.0
REDIS_URL = os.environ["REDIS_URL"]
REDIS_KEY_PREFIX = os.environ.get("REDIS_KEY_PREFIX", "")
REDIS_TIMEOUT_S = 1.5
