import functools
import gzip
import hashlib
import http.server
import socket
import threading
from pathlib import Path

import pytest

from pipeline.corpus.download import DownloadError, fetch, is_url
from pipeline.infra.errors import UserError

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture()
def export(tmp_path) -> Path:
    """A real (small) export: the fixture entries, gzipped."""
    path = tmp_path / "served" / "anthology+abstracts.bib.gz"
    path.parent.mkdir()
    path.write_bytes(gzip.compress((FIXTURES / "real_entries.bib").read_bytes()))
    return path


@pytest.fixture()
def server(export):
    """A real HTTP server on the loopback interface serving the export's folder."""
    handler = functools.partial(QuietHandler, directory=str(export.parent))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def only_file(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_is_url():
    assert is_url("https://aclanthology.org/anthology+abstracts.bib.gz")
    assert is_url("http://127.0.0.1:8000/x.gz")
    assert not is_url("data/sample/anthology-sample.bib.gz")
    assert not is_url("/abs/path.bib.gz")


def test_local_copy_records_sha256_and_size(export, tmp_path):
    out = tmp_path / "raw" / "anthology+abstracts.bib.gz"
    info = fetch(str(export), out)
    assert out.read_bytes() == export.read_bytes()
    assert info.sha256 == hashlib.sha256(export.read_bytes()).hexdigest()
    assert info.size == export.stat().st_size
    assert info.uncompressed_size == len((FIXTURES / "real_entries.bib").read_bytes())
    assert info.source == str(export)
    assert only_file(out.parent) == ["anthology+abstracts.bib.gz"]


def test_url_download_over_loopback_http(server, export, tmp_path):
    out = tmp_path / "raw" / "anthology+abstracts.bib.gz"
    url = f"{server}/anthology+abstracts.bib.gz"
    info = fetch(url, out, timeout=10)
    assert out.read_bytes() == export.read_bytes()
    assert info.source == url
    assert info.sha256 == hashlib.sha256(export.read_bytes()).hexdigest()


def test_http_error_names_the_url_and_leaves_nothing(server, tmp_path):
    out = tmp_path / "raw" / "anthology+abstracts.bib.gz"
    url = f"{server}/missing.bib.gz"
    with pytest.raises(DownloadError, match=rf"could not download {url}: HTTP 404"):
        fetch(url, out, timeout=10)
    assert not out.exists() and only_file(out.parent) == []


def test_unreachable_url_explains_how_to_use_a_local_copy(tmp_path):
    out = tmp_path / "raw" / "anthology+abstracts.bib.gz"
    url = f"http://127.0.0.1:{closed_port()}/anthology+abstracts.bib.gz"
    with pytest.raises(DownloadError) as err:
        fetch(url, out, timeout=5)
    message = str(err.value)
    assert f"could not download {url}" in message
    assert "set `data.source` in params.yaml to its local path" in message
    assert not out.exists() and only_file(out.parent) == []


def test_corrupt_gzip_is_rejected_and_the_old_file_kept(export, tmp_path):
    out = tmp_path / "raw" / "anthology+abstracts.bib.gz"
    fetch(str(export), out)
    good = out.read_bytes()
    truncated = tmp_path / "truncated.bib.gz"
    truncated.write_bytes(good[: len(good) // 2])
    with pytest.raises(DownloadError, match="truncated.bib.gz is not a valid, complete gzip"):
        fetch(str(truncated), out)
    assert out.read_bytes() == good  # the previous good copy is untouched
    assert only_file(out.parent) == ["anthology+abstracts.bib.gz"]


def test_plain_bibtex_is_accepted_uncompressed(tmp_path):
    # Formats are read from the content: a plain .bib is BibTeX, copied as it is.
    info = fetch(str(FIXTURES / "real_entries.bib"), tmp_path / "out")
    assert (info.format, info.gzipped) == ("bibtex", False)
    assert (tmp_path / "out").read_bytes() == (FIXTURES / "real_entries.bib").read_bytes()


def test_missing_local_source_is_a_clear_error(tmp_path):
    with pytest.raises(DownloadError, match="local source .*nope.bib.gz does not exist"):
        fetch(str(tmp_path / "nope.bib.gz"), tmp_path / "out.bib.gz")


def test_unsupported_scheme(tmp_path):
    with pytest.raises(DownloadError, match="unsupported source 'ftp://"):
        fetch("ftp://example.org/x.bib.gz", tmp_path / "out.bib.gz")


# --- a file without a single BibTeX entry stops `download` ----------------------------------

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("name, found", [
    ("empty.bib.gz", "gzip-compressed empty text"),
    ("not_bibtex.txt.gz", "a gzip-compressed HTML/XML document whose first line is '<html>")])
def test_gzip_without_entries_is_refused(name, found, tmp_path):
    # Before: accepted with exit 0; parse and filter then produced empty tables.
    out = tmp_path / "raw" / "anthology+abstracts.bib.gz"
    with pytest.raises(UserError, match=f"{name} is not a corpus file: found {found}") as err:
        fetch(str(DATA / name), out)
    assert "accepted formats: BibTeX (.bib), CSV, TSV, JSON Lines" in str(err.value)
    assert "data.source" in err.value.fix
    assert not out.exists() and only_file(out.parent) == []


def test_empty_file_is_refused(tmp_path):
    with pytest.raises(UserError, match="empty.bib is not a corpus file: found an empty file"):
        fetch(str(DATA / "empty.bib"), tmp_path / "out.bib.gz")


def test_an_entry_across_two_read_chunks_is_found(tmp_path):
    # The check reads the stream in 1 MiB pieces; "@inproceedings{" straddles the first boundary.
    text = b"%" * ((1 << 20) - 5) + b"\n@inproceedings{x-2020, year = \"2020\"}\n"
    source = tmp_path / "straddle.bib.gz"
    source.write_bytes(gzip.compress(text, mtime=0))
    assert fetch(str(source), tmp_path / "out.bib.gz").uncompressed_size == len(text)
