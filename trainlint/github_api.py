"""A minimal GitHub REST client for posting pull-request reviews (standard library only)."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass

import trainlint

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')


class GitHubError(Exception):
    """A request GitHub refused or that never reached it; the message says which and why."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class GitHubClient:
    token: str
    api_url: str = DEFAULT_API_URL
    timeout: float = 30.0

    def _request(self, method: str, url: str, body: dict | None = None) -> tuple[object, dict]:
        if not url.startswith(("http://", "https://")):
            url = self.api_url.rstrip("/") + url
        data = json.dumps(body).encode("utf-8") if body is not None else None
        headers = {
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {self.token}",
            "X-GitHub-Api-Version": API_VERSION,
            # GitHub rejects requests without a User-Agent.
            "User-Agent": f"trainlint/{trainlint.__version__}",
        }
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                payload = resp.read()
                return (json.loads(payload) if payload else None), dict(resp.headers)
        except urllib.error.HTTPError as exc:
            detail = _error_detail(exc)
            raise GitHubError(f"{method} {url} failed: HTTP {exc.code} {detail}".rstrip(), exc.code) from None
        except urllib.error.URLError as exc:
            raise GitHubError(f"{method} {url} failed: {exc.reason}") from None
        except (TimeoutError, OSError) as exc:
            raise GitHubError(f"{method} {url} failed: {exc}") from None
        except json.JSONDecodeError:
            raise GitHubError(f"{method} {url} returned a body that is not JSON") from None

    def _paged(self, path: str) -> list:
        items: list = []
        url: str | None = f"{path}{'&' if '?' in path else '?'}per_page=100"
        while url:
            page, headers = self._request("GET", url)
            if not isinstance(page, list):
                raise GitHubError(f"GET {url} returned {type(page).__name__}, expected a list")
            items.extend(page)
            match = _NEXT.search(headers.get("Link", "") or headers.get("link", ""))
            url = match.group(1) if match else None
        return items

    def review_comments(self, repo: str, number: int) -> list[dict]:
        """Every review comment on the pull request (all pages)."""
        return self._paged(f"/repos/{repo}/pulls/{number}/comments")

    def create_review(self, repo: str, number: int, review: dict) -> dict:
        result, _ = self._request("POST", f"/repos/{repo}/pulls/{number}/reviews", review)
        return result if isinstance(result, dict) else {}


def _error_detail(exc: urllib.error.HTTPError) -> str:
    """GitHub's own explanation ({"message": ..., "errors": [...]}) when it sent one."""
    try:
        body = json.loads(exc.read() or b"{}")
    except (json.JSONDecodeError, OSError):
        return exc.reason or ""
    if not isinstance(body, dict):
        return exc.reason or ""
    parts = [str(body.get("message") or exc.reason or "")]
    for err in body.get("errors") or []:
        parts.append(err if isinstance(err, str) else json.dumps(err))
    return ": ".join(p for p in parts if p)
