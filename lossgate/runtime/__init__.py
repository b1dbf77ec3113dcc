"""Process machinery every layer may use: the caches that hold memory's text (and the one
call that empties them), foreign code under a deadline, and one JSON POST to an
OpenAI-compatible server with its retry policy."""
