"""Rating conversations: the rating page and its API, for FIRE batches and their preference variant."""
