"""`python -m app`: serve Attention Lab on the configured HOST and PORT with WORKERS processes
(app/server/run.py)."""

from app.server.run import main

if __name__ == "__main__":
    main()
