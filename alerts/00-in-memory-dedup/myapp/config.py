import os

ALERT_WEBHOOK_URL = os.environ["ALERT_WEBHOOK_URL"]
SANDBOX_API_URL = os.environ["SANDBOX_API_URL"]
REPLICA = os.environ.get("REPLICA", "?")
HTTP_TIMEOUT_S = 10.0
