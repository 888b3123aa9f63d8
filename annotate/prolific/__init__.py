"""Running a batch's Prolific study through Prolific's public API (v1): connect, create and publish the study,
follow its submissions, approve, reject and pay bonuses. client.py is the one module that talks to Prolific."""
