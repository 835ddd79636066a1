"""How `python -m app` serves: gunicorn's arbiter runs the worker processes (run.py), each a
uvicorn server whose HTTP protocol bounds what slow and greedy clients can hold
(protocol.py), answering what it refuses in the app's own way (answers.py)."""
