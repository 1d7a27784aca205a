# TEMPORARY: replaced by the secrets branch
def redact_secrets(value):
    return value, 0
