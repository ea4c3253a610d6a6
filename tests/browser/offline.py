"""A local page in Chromium with every outside request refused, for the tests that open saved files."""


def offline_page(browser, seen: dict):
    """A new page with every request outside local files refused: the refused addresses go to seen["outside"],
    script errors and console errors to seen["errors"]."""
    def route(r):
        if r.request.url.startswith(("file:", "data:", "about:")):
            return r.continue_()
        seen["outside"].append(r.request.url)
        return r.abort()

    page = browser.new_page()
    page.route("**/*", route)
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    return page
