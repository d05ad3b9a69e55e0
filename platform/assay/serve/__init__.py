"""``assay serve``: the team's leaderboard as a read-only web app.

- ``access``: who may read it (HTTP basic auth, bearer tokens, or loopback only);
- ``views``: what the pages show, as plain data (the overview, a leaderboard and its filters);
- ``links``: every page's address, built in one place;
- ``app``: the Starlette app, its pages and their JSON twins.
"""

__all__ = ["access", "app", "links", "views"]
