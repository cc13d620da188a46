"""A local stand-in for the GitHub REST API's pull-request review endpoints, on 127.0.0.1.

It checks what github.com requires of a request (a bearer token, the JSON media type, the API
version header, a User-Agent, a JSON body of the documented shape, a commit of the pull request,
comment lines that fall inside the diff's hunks) and answers the way GitHub does, including
paginated listing with Link headers, so the client is exercised end to end over real HTTP.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

REVIEWS = re.compile(r"^/repos/([^/]+)/([^/]+)/pulls/(\d+)/reviews$")
COMMENTS = re.compile(r"^/repos/([^/]+)/([^/]+)/pulls/(\d+)/comments$")
REVIEW_KEYS = {"commit_id", "body", "event", "comments"}
COMMENT_KEYS = {"path", "body", "line", "side", "start_line", "start_side", "position"}


class FakeGitHub:
    def __init__(self, token: str, repo: str, number: int, head_sha: str, commentable: dict[str, set[int]]):
        self.token = token
        self.repo = repo
        self.number = number
        self.head_sha = head_sha
        self.commentable = commentable  # path -> lines of the PR diff's hunks (head side)
        self.reviews: list[dict] = []
        self.comments: list[dict] = []
        self.requests: list[tuple[str, str]] = []
        self.rejections: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def _send(self, status: int, body, headers: dict | None = None):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _reject(self, status: int, message: str, errors=None):
                fake.rejections.append(message)
                body = {"message": message, "documentation_url": "https://docs.github.com/rest"}
                if errors:
                    body["errors"] = errors
                self._send(status, body)

            def _check_headers(self) -> bool:
                if not self.headers.get("User-Agent"):
                    self._reject(403, "Request forbidden by administrative rules. Please make sure your request has a User-Agent header")
                    return False
                if self.headers.get("Authorization") != f"Bearer {fake.token}":
                    self._reject(401, "Bad credentials")
                    return False
                if self.headers.get("Accept") != "application/vnd.github+json":
                    self._reject(415, "Unsupported 'Accept' header")
                    return False
                if self.headers.get("X-GitHub-Api-Version") != "2022-11-28":
                    self._reject(400, "Unsupported API version")
                    return False
                return True

            def _pull(self, match) -> bool:
                owner, name, number = match.groups()
                if f"{owner}/{name}" != fake.repo or int(number) != fake.number:
                    self._reject(404, "Not Found")
                    return False
                return True

            def do_GET(self):
                fake.requests.append(("GET", self.path))
                if not self._check_headers():
                    return
                url = urlparse(self.path)
                match = COMMENTS.match(url.path)
                if not match or not self._pull(match):
                    return self._reject(404, "Not Found") if not match else None
                query = parse_qs(url.query)
                per_page = min(int(query.get("per_page", ["30"])[0]), 100)
                page = int(query.get("page", ["1"])[0])
                items = fake.comments[(page - 1) * per_page : page * per_page]
                headers = {}
                if page * per_page < len(fake.comments):
                    nxt = f"http://{self.headers['Host']}{url.path}?per_page={per_page}&page={page + 1}"
                    headers["Link"] = f'<{nxt}>; rel="next"'
                self._send(200, items, headers)

            def do_POST(self):
                fake.requests.append(("POST", self.path))
                if not self._check_headers():
                    return
                match = REVIEWS.match(urlparse(self.path).path)
                if not match:
                    return self._reject(404, "Not Found")
                if not self._pull(match):
                    return
                if not (self.headers.get("Content-Type") or "").startswith("application/json"):
                    return self._reject(400, "Problems parsing JSON")
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    review = json.loads(raw)
                except json.JSONDecodeError:
                    return self._reject(400, "Problems parsing JSON")
                problem = fake.validate(review)
                if problem:
                    return self._reject(422, "Unprocessable Entity", [problem])
                review_id = len(fake.reviews) + 1
                fake.reviews.append(review)
                for c in review.get("comments", []):
                    fake.comments.append(
                        {
                            "id": 1000 + len(fake.comments),
                            "pull_request_review_id": review_id,
                            "path": c["path"],
                            "line": c["line"],
                            "start_line": c.get("start_line"),
                            "side": c.get("side", "RIGHT"),
                            "body": c["body"],
                            "commit_id": review["commit_id"],
                        }
                    )
                self._send(
                    200,
                    {
                        "id": review_id,
                        "state": "COMMENTED",
                        "commit_id": review["commit_id"],
                        "html_url": f"https://github.com/{fake.repo}/pull/{fake.number}#pullrequestreview-{review_id}",
                    },
                )

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def validate(self, review) -> str | None:
        """Why GitHub would refuse this review body (None when it would accept it)."""
        if not isinstance(review, dict) or not set(review) <= REVIEW_KEYS:
            return f"unexpected keys {sorted(set(review) - REVIEW_KEYS) if isinstance(review, dict) else review}"
        if review.get("commit_id") != self.head_sha:
            return "commit_id is not part of the pull request"
        if review.get("event") not in ("COMMENT", "APPROVE", "REQUEST_CHANGES"):
            return "event must be COMMENT, APPROVE or REQUEST_CHANGES"
        if review["event"] != "APPROVE" and not review.get("body") and not review.get("comments"):
            return "body is required for COMMENT and REQUEST_CHANGES"
        comments = review.get("comments", [])
        if not isinstance(comments, list):
            return "comments must be an array"
        for c in comments:
            if not isinstance(c, dict) or not set(c) <= COMMENT_KEYS:
                return f"comment has unexpected keys: {c}"
            if not isinstance(c.get("path"), str) or not isinstance(c.get("body"), str) or not c["body"]:
                return "comment needs path and body strings"
            line = c.get("line")
            if not isinstance(line, int) or c.get("side", "RIGHT") != "RIGHT":
                return "comment needs an integer line on the RIGHT side"
            lines = self.commentable.get(c["path"])
            if lines is None:
                return f"Path could not be resolved: {c['path']}"
            start = c.get("start_line", line)
            if "start_line" in c and (not isinstance(start, int) or start >= line or c.get("start_side") != "RIGHT"):
                return "start_line must precede line, with start_side RIGHT"
            if not all(r in lines for r in range(start, line + 1)):
                return f"Line could not be resolved: {c['path']} {start}-{line}"
        return None

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
