"""In Chromium, served by ``streamlit run app.py`` on 127.0.0.1 with the project's config: a
store location with a password that cannot be reached shows one message with the password
masked (nowhere in the page's text or HTML), and users get no Deploy button and no developer
items in the main menu (Streamlit's default shows both on localhost)."""

from __future__ import annotations

import socket

import pytest

from tests.browser.conftest import serve_app
from tests.browser.test_flows import main_text, no_exception, wait_idle

pytestmark = pytest.mark.browser

SECRET = "SECRETPW-b10c"
DEVELOPER_ITEMS = ("Rerun", "Clear cache", "Deploy this app", "Developer options")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_store_in_the_browser(browser, tmp_path):
    location = (f"ducklake:postgres:dbname=evals host=127.0.0.1 port={closed_port()} "
                f"user=evalbars password={SECRET}")
    with serve_app(tmp_path, location) as url:
        context = browser.new_context(viewport={"width": 1500, "height": 1000})
        try:
            page = context.new_page()
            page.set_default_timeout(60_000)
            page.goto(url + "/compare")
            wait_idle(page)
            no_exception(page)
            text = main_text(page)
            assert "cannot be reached" in text and "password=***" in text
            assert "store is empty" not in text.lower()
            assert SECRET not in page.locator("body").inner_text()
            assert SECRET not in page.content()
            assert page.locator("[data-testid='stAppDeployButton']").count() == 0
            menu = page.locator("[data-testid='stMainMenu'] button")
            if menu.count():
                menu.first.click()
                items = page.locator("[data-testid='stMainMenuList']").inner_text()
                assert not any(item in items for item in DEVELOPER_ITEMS), items
        finally:
            context.close()
