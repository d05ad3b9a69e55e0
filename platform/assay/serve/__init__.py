"""``assay serve``: the team's leaderboard as a read-only web app.

- ``access``: who may read it (HTTP basic auth, bearer tokens, or loopback only);
- ``views``: what the pages show, as plain data (the overview, a leaderboard and its filters);
- ``links``: every page's address, built in one place;
- ``pages``: each page built once (template, JSON twin, what it shows), for the app and the export;
- ``app``: the Starlette app: requests to pages and their JSON twins;
- ``export``: the pages as self-contained files, for ``assay report``;
- ``freshness``: answers reused while the catalog and the stores are unchanged.
"""

__all__ = ["access", "app", "export", "freshness", "links", "pages", "views"]
