"""``assay serve``: the team's leaderboard as a read-only web app.

- ``access``: who may read it (HTTP basic auth, bearer tokens, or loopback only);
- ``views``: what the pages show, as plain data (the overview, a leaderboard and its filters);
- ``app``: the Starlette app, its pages and their JSON twins.
"""

__all__ = ["access", "app", "views"]
