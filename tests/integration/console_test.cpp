// The web console's files over HTTP from the real server: served without a
// token, byte for byte as embedded, with the right types and the security
// headers; the API behind it still wants the token. Also the rules the
// files themselves keep: nothing inline for the CSP to allow, no innerHTML.
// (tests/browser/ runs the console itself in Chromium.)
#include <doctest/doctest.h>

#include <httplib.h>

#include <string>

#include "server/console.h"
#include "tests/support/contains.h"
#include "tests/support/test_server.h"
#include "tests/support/text_pattern.h"

namespace webhooker::testing {
namespace {

std::string routeOf(const EmbeddedFile& file) {
  return file.path == "index.html" ? "/" : "/" + std::string(file.path);
}

const EmbeddedFile& fileNamed(std::string_view path) {
  for (const EmbeddedFile& f : server::consoleFiles())
    if (f.path == path) return f;
  FAIL("no embedded file " << path);
  return server::consoleFiles().front();  // not reached
}

}  // namespace

TEST_CASE("every file of web/ is embedded and served at its path, without a token") {
  TestServer server;
  auto c = server.anonymousClient();
  REQUIRE(server::consoleFiles().size() >= 4);
  for (const EmbeddedFile& file : server::consoleFiles()) {
    CAPTURE(file.path);
    auto res = c.Get(routeOf(file));
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(res->body == file.content);
  }
  CHECK(c.Get("/")->get_header_value("Content-Type") == "text/html; charset=utf-8");
  CHECK(c.Get("/assets/app.js")->get_header_value("Content-Type") ==
        "text/javascript; charset=utf-8");
  CHECK(c.Get("/assets/style.css")->get_header_value("Content-Type") == "text/css; charset=utf-8");
  CHECK(c.Get("/assets/favicon.svg")->get_header_value("Content-Type") == "image/svg+xml");
  // HEAD answers like GET, without the body.
  auto head = c.Head("/assets/app.js");
  REQUIRE(head);
  CHECK(head->status == 200);
  CHECK(head->body.empty());
}

TEST_CASE("console responses carry the security headers") {
  TestServer server;
  auto c = server.anonymousClient();
  for (const char* path : {"/", "/assets/app.js", "/assets/style.css"}) {
    CAPTURE(path);
    auto res = c.Get(path);
    REQUIRE(res);
    const std::string csp = res->get_header_value("Content-Security-Policy");
    CHECK(contains(csp, "default-src 'none'"));
    CHECK(contains(csp, "script-src 'self'"));
    CHECK(contains(csp, "style-src 'self'"));
    CHECK(contains(csp, "connect-src 'self'"));
    CHECK(contains(csp, "frame-ancestors 'none'"));
    CHECK_FALSE(contains(csp, "unsafe-inline"));
    CHECK_FALSE(contains(csp, "unsafe-eval"));
    CHECK(res->get_header_value("X-Content-Type-Options") == "nosniff");
    CHECK(res->get_header_value("X-Frame-Options") == "DENY");
    CHECK(res->get_header_value("Referrer-Policy") == "no-referrer");
    CHECK(res->get_header_value("Cache-Control") == "no-cache");
  }
}

TEST_CASE("an unchanged file is revalidated with its ETag: 304 without a body") {
  TestServer server;
  auto c = server.anonymousClient();
  auto first = c.Get("/assets/app.js");
  REQUIRE(first);
  const std::string etag = first->get_header_value("ETag");
  REQUIRE(etag.size() > 2);
  auto again = c.Get("/assets/app.js", {{"If-None-Match", etag}});
  REQUIRE(again);
  CHECK(again->status == 304);
  CHECK(again->body.empty());
  CHECK(c.Get("/assets/style.css")->get_header_value("ETag") != etag);
  auto stale = c.Get("/assets/app.js", {{"If-None-Match", "\"0000\""}});
  REQUIRE(stale);
  CHECK(stale->status == 200);
  CHECK(stale->body == fileNamed("assets/app.js").content);
}

TEST_CASE("the console opens nothing else: unknown files 404, the API still wants the token") {
  TestServer server;
  auto c = server.anonymousClient();
  auto missing = c.Get("/assets/missing.js");
  CHECK(statusOf(missing) == 404);
  CHECK(errorCode(missing) == "not_found");
  CHECK(statusOf(c.Get("/index.html")) == 404);
  CHECK(statusOf(c.Get("/assets/app.jsx")) == 404);
  auto posted = c.Post("/", "x", "text/plain");  // the page exists, for GET only
  CHECK(statusOf(posted) == 405);
  CHECK(errorCode(posted) == "method_not_allowed");
  REQUIRE(posted);
  CHECK(posted->get_header_value("Allow") == "GET, HEAD");
  auto api = c.Get("/api/v1/webhooks");
  CHECK(statusOf(api) == 401);
  CHECK(errorCode(api) == "unauthorized");
  // API answers are never sniffed into something a browser would run either.
  CHECK(api->get_header_value("X-Content-Type-Options") == "nosniff");
  CHECK(api->get_header_value_count("X-Content-Type-Options") == 1);
  auto authorized = server.client().Get("/api/v1/webhooks");
  REQUIRE(statusOf(authorized) == 200);
  CHECK(authorized->get_header_value("X-Content-Type-Options") == "nosniff");
}

TEST_CASE("the page links only embedded files and has nothing inline") {
  const std::string html(fileNamed("index.html").content);
  int refs = 0;
  for (const std::string& ref : allMatches(html, R"re((?:src|href)="(/[^"]*)")re", 1)) {
    const std::string path = ref.substr(1);
    CAPTURE(path);
    CHECK(fileNamed(path).path == path);
    ++refs;
  }
  CHECK(refs == 3);  // script, style sheet, icon
  // Every <script> has a src; no style attribute or element, no handler attribute.
  CHECK(firstMatch(html, R"(<script src="/assets/app\.js" defer></script>)"));
  CHECK_FALSE(firstMatch(html, R"(<script(?![^>]*\ssrc=))"));
  CHECK_FALSE(contains(html, "<style"));
  CHECK_FALSE(contains(html, "style="));
  CHECK_FALSE(firstMatch(html, R"(\son[a-z]+=)"));
  // Data reaches the page as text only.
  const std::string_view js = fileNamed("assets/app.js").content;
  CHECK_FALSE(contains(js, "innerHTML"));
  CHECK_FALSE(contains(js, "outerHTML"));
  CHECK_FALSE(contains(js, "insertAdjacentHTML"));
  CHECK_FALSE(contains(js, "document.write"));
  CHECK_FALSE(contains(js, "localStorage"));
}

}  // namespace webhooker::testing
