"""Writes the corpus of bad and odd upload files in tests/data (run once; the files are committed).

Run from the repository root: ``.venv/bin/python tests/data/make_corpus.py``. The output is
deterministic (gzip timestamps fixed at 0), so rerunning it changes no committed file.
"""

from __future__ import annotations

import gzip
import io
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _gzip(data: bytes) -> bytes:
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=9) as stream:
        stream.write(data)
    return out.getvalue()


def _zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        info = zipfile.ZipInfo("table.csv", date_time=(2000, 1, 1, 0, 0, 0))
        archive.writestr(info, "a,b\n1,2\n")
    return out.getvalue()


def _bomb() -> bytes:
    # 32 MiB of the same row: about 32 KB compressed. Tests load it with max_bytes = 1 MiB,
    # so the decompression limit is 4 MiB and the loader must stop long before the end.
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=9) as stream:
        stream.write(b"a,b\n")
        block = b"0,0\n" * (2**20 // 4)
        for _ in range(32):
            stream.write(block)
    return out.getvalue()


CLEAN = b"name,age,city\nAna,34,Oslo\nBen,29,Rome\nCai,41,Lima\n"

FILES: dict[str, bytes] = {
    # ---- bad files: must raise DatasetError -------------------------------------------------
    "empty.csv": b"",
    "whitespace_only.csv": b"   \n\n \t \n\n",
    "binary.bin": bytes(range(256)) * 4,
    "png_named.csv": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01",
    "zip_named.csv": _zip(),
    "pdf_named.csv": b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\n",
    "header_only.csv": b"age,sex,income\n",
    "no_header.csv": b"1,2,3\n4,5,6\n7,8,9\n",
    "utf16_no_bom.csv": "name,age\nAna,34\n".encode("utf-16-le"),
    "control_garbage.csv": bytes(range(1, 32)) * 40,
    "gzip_bomb.csv.gz": _bomb(),
    "gzip_corrupt.csv.gz": _gzip(CLEAN * 20)[:60],
    "double_gzip.csv.gz": _gzip(_gzip(CLEAN)),
    "unclosed_quote.csv": b'name,note\nAna,"never closed\nBen,fine\nCai,fine\n',
    "json_named.csv": b'[{"name": "Ana", "age": 34}, {"name": "Ben", "age": 29}]\n',
    "html_page.csv": (b"<!DOCTYPE html>\n<html><body><table><tr><td>1</td></tr></table>"
                      b"</body></html>\n"),
    "only_missing.csv": b"a,b,c\nNA,,null\n,N/A,\nNaN,,#N/A\n",
    # ---- odd files: load, with a warning saying what changed --------------------------------
    "latin1.csv": "name,city\nJosé,Zürich\nRenée,Köln\nÅsa,Malmö\n".encode("latin-1"),
    "cp1252.csv": "item,price\n“Café” menu,€3\nCrème brûlée,€5\n".encode("cp1252"),
    "utf8_bom.csv": b"\xef\xbb\xbf" + CLEAN,
    "utf16.csv": CLEAN.decode().encode("utf-16"),
    "semicolon.csv": b"city;temp;rain\nOslo;3,5;120\nRome;15,25;80\nLima;19;5\n",
    "tab.tsv": b"name\tnote\tscore\nAna\tlikes tea, coffee\t1\nBen\tno, thanks\t2\n",
    "pipe.csv": b"name|age|city\nAna|34|Oslo\nBen|29|Rome\n",
    "gzipped.csv.gz": _gzip(CLEAN),
    "plain_named_gz.csv.gz": CLEAN,
    "ragged_rows.csv": b"a,b,c\n1,2,3\n4,5\n6,7,8\n9,10,11,12\n13,14,15\n16\n",
    "trailing_delimiter.csv": b"a,b\n1,2,\n3,4,\n5,6,\n",
    "harmless_extra_comma.csv": b"a,b\n1,2\n3,4,\n5,6\n",
    "short_header.csv": b"a,b\n0,1,2\n1,3,4\n2,5,6\n",
    "inf_nan.csv": b"x,y\n1,inf\n2,-inf\n3,NaN\n4,5\n5,\n6,7.5\n",
    "duplicate_columns.csv": b"a,a,b,a\n1,2,3,4\n5,6,7,8\n",
    "html_columns.csv": (b"<b>bold</b>,<script>alert(1)</script>,<img src=x onerror=alert(1)>,"
                         b"plain\n1,2,3,4\n"),
    "markdown_columns.csv": (b"**bold**,[link](http://example.com),# heading,:red[colour]\n"
                             b"1,2,3,4\n"),
    "formula_cells.csv": b"name,cmd\nAna,=1+2\nBen,@SUM(A1)\nCai,+cmd\nDan,-2+3\nEve,plain\n",
    "formula_names.csv": b"=HYPERLINK(\"http://x\"),@cmd,ok\n1,2,3\n",
    "very_wide.csv": (",".join(f"c{i}" for i in range(1, 601)) + "\n"
                      + "\n".join(",".join(["1"] * 600) for _ in range(3)) + "\n").encode(),
    "one_column.csv": b"value\n1\n2\n3\n",
    "all_empty_column.csv": b"a,b,c\n1,,x\n2,,y\n3,,z\n",
    "thousands_separators.csv": (b'name,income\nAna,"1,234"\nBen,"12,345,678"\nCai,999\n'
                                 b'Dan,"1,000.50"\n'),
    "mixed_types.csv": (b"mostly_numbers,half_numbers\n"
                        + b"".join(f"{i},{i if i % 2 else 'word' + str(i)}\n".encode()
                                   for i in range(39))
                        + b"unknown,word\n"),
    "quoted_newlines.csv": b'name,address\nAna,"1 Main St\nSpringfield"\nBen,"2 ""Quoted"" Rd"\n',
    "crlf.csv": b"a,b\r\n1,x\r\n2,y\r\n",
    "cr_only.csv": b"a,b\r1,x\r2,y\r",
    "empty_column_names.csv": b"a,,c\n1,2,3\n4,5,6\n",
    "whitespace_names.csv": b"  a  , b\t,c \n1,2,3\n",
    "control_chars_names.csv": b"a\x07b,c\x1bd\n1,2\n",
    "long_name.csv": ("x" * 300 + ",short\n1,2\n").encode(),
    "high_cardinality.csv": (b"id,group\n"
                             + b"".join(f"id{i:04d},g{i % 3}\n".encode() for i in range(1200))),
    "blank_rows.csv": b"a,b\n1,2\n\n,\n3,4\n\n\n",
    "sep_line.csv": b"sep=;\na;b\n1;2\n3;4\n",
    "unicode_names.csv": "名前,âge,😀\nx,1,2\ny,3,4\n".encode(),
    "spaces_in_cells.csv": b"a,b\n x ,1 \n y, 2\n",
    "leading_blank_lines.csv": b"\n\nname,age\nAna,34\n",
}


def main() -> None:
    for name, data in FILES.items():
        (HERE / name).write_bytes(data)
    print(f"wrote {len(FILES)} files to {HERE}")


if __name__ == "__main__":
    main()
