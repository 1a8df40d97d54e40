"""HTTPS ingest through Debian's nginx with the repo's site config
(packaging/nginx/webhooker.conf): nginx ends TLS and passes the client's
address in X-Forwarded-For, which webhooker believes from nginx only.

The client sends from 127.0.0.2, so its address differs from nginx's
(127.0.0.1, the one trusted proxy): a stored 127.0.0.2 can only have come
from the header."""
import http.client
import json
import os
import pathlib
import re
import sqlite3
import ssl
import subprocess
import time

from support import (ADMIN_TOKEN, Daemon, create_webhook, free_port, require_tools, run,
                     serve_flags, temp_dir)

CLIENT = "127.0.0.2"
FORGED = "198.51.100.23"
BODY = bytes(range(256)) + b'{"order": 42}\r\n\x00end'  # every byte value, a NUL, a CRLF

require_tools("nginx", "openssl")
site = pathlib.Path(os.environ["WEBHOOKER_SOURCE_DIR"]) / "packaging/nginx/webhooker.conf"


def site_for_test(daemon_port, tls_port, tmp):
    """The shipped site, moved to loopback ports and the test's certificate."""
    text = site.read_text()
    text = text.replace("server 127.0.0.1:8080;", f"server 127.0.0.1:{daemon_port};")
    text = re.sub(r"^\s*listen \[::\].*\n", "", text, flags=re.M)
    text = text.replace("listen 443 ssl", f"listen 127.0.0.1:{tls_port} ssl")
    text = text.replace("listen 80;", f"listen 127.0.0.1:{free_port()};")
    text = re.sub(r"ssl_certificate\s+\S+;", f"ssl_certificate {tmp}/cert.pem;", text)
    text = re.sub(r"ssl_certificate_key\s+\S+;", f"ssl_certificate_key {tmp}/key.pem;", text)
    for moved in (f":{tls_port} ssl", f":{daemon_port};", f"{tmp}/cert.pem", f"{tmp}/key.pem"):
        assert moved in text, f"the site config changed shape: {moved} not placed"
    return text


def nginx_conf(tmp):
    # As root nginx would hand its workers to "nobody", who cannot read the
    # temp folder; as anyone else the user directive is ignored.
    user = "user root;" if os.getuid() == 0 else ""
    return f"""{user}
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log {tmp}/access.log;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    include {tmp}/site.conf;
}}
"""


def start_nginx(tmp, daemon_port):
    """nginx on a free loopback port; a port taken between the check and
    nginx's bind is tried again with another."""
    (tmp / "nginx.conf").write_text(nginx_conf(tmp))
    for _ in range(5):
        tls_port = free_port()
        (tmp / "site.conf").write_text(site_for_test(daemon_port, tls_port, tmp))
        nginx = subprocess.Popen(["nginx", "-p", str(tmp), "-e", str(tmp / "error.log"),
                                  "-c", str(tmp / "nginx.conf")])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and nginx.poll() is None:
            try:
                with ssl.create_connection(("127.0.0.1", tls_port), timeout=1):
                    return nginx, tls_port
            except OSError:
                time.sleep(0.05)
        nginx.kill()
        nginx.wait()
        if "Address already in use" not in (tmp / "error.log").read_text():
            break
    raise AssertionError("nginx did not start:\n" + (tmp / "error.log").read_text())


def post(port, path, headers, context=None):
    """POST from CLIENT's address; (status, body)."""
    if context:
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=context,
                                                 source_address=(CLIENT, 0), timeout=10)
    else:
        connection = http.client.HTTPConnection("127.0.0.1", port,
                                                source_address=(CLIENT, 0), timeout=10)
    connection.request("POST", path, BODY, headers)
    response = connection.getresponse()
    answer = (response.status, response.read())
    connection.close()
    return answer


def stored_event(data_dir, webhook_id, event_id):
    with sqlite3.connect(f"file:{data_dir}/events-{webhook_id}.db?mode=ro", uri=True) as db:
        return db.execute("select body, remote_addr from events where id = ?",
                          (event_id,)).fetchone()


with temp_dir() as name:
    tmp = pathlib.Path(name)
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(tmp / "key.pem"), "-out", str(tmp / "cert.pem")])
    tls = ssl.create_default_context(cafile=str(tmp / "cert.pem"))
    data = tmp / "data"
    with Daemon(os.environ["WEBHOOKER_BIN"], serve_flags(data, "--trusted-proxies", "127.0.0.1/32"),
                {"WEBHOOKER_ADMIN_TOKEN": ADMIN_TOKEN}) as daemon:
        webhook, entrypoint = create_webhook(daemon)
        nginx, tls_port = start_nginx(tmp, daemon.port)
        try:
            # Through nginx, with a forged header of the client's own: nginx
            # replaces it with the address it saw.
            headers = {"Content-Type": "application/octet-stream", "X-Forwarded-For": FORGED}
            status, answer = post(tls_port, f"/hooks/{entrypoint}", headers, tls)
            assert status == 200, f"through nginx: {status} {answer!r}"
            body, address = stored_event(data, webhook, json.loads(answer)["event_id"])
            assert body == BODY, "the body changed on its way through nginx"
            assert address == CLIENT, f"stored {address!r}, the client was {CLIENT}"

            # Straight to the daemon from an untrusted peer: the header is ignored.
            status, answer = post(daemon.port, f"/hooks/{entrypoint}", headers)
            assert status == 200, f"direct: {status} {answer!r}"
            _, address = stored_event(data, webhook, json.loads(answer)["event_id"])
            assert address == CLIENT, f"stored {address!r} from a forged X-Forwarded-For"
        finally:
            nginx.terminate()
            nginx.wait(timeout=10)
print("nginx passed the client's address; a forged header was ignored")
