"""Writes its environment as JSON to stdout."""
import json
import os

print(json.dumps(dict(os.environ)))
