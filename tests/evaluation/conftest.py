import pytest


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Factories set passwords; the default PBKDF2 costs ~0.3 s per user, which these tests do not need."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
