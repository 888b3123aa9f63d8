"""Passwords the tests set are hashed with one PBKDF2 iteration (Django's testing docs advise a fast hasher: the
default 1,000,000 iterations cost 0.3-0.6 s per user and per login here, over a suite that makes hundreds).

The hashes keep the standard ``pbkdf2_sha256$<iterations>$...`` form, so the web servers and workers the end-to-end
tests start in processes of their own, with the app's own hashers, still verify them: PBKDF2 reads the iteration
count from the hash."""

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class OneIterationPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1
