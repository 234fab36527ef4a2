#!/usr/bin/env python3
"""Check that a figure keeps its text and lines inside each panel.

Usage: png_margins.py FILE.png COLS ROWS [MARGIN_PX]

The image (8-bit RGB or RGBA, not interlaced: what PLplot's pngcairo writes) is split into
COLS x ROWS equal subpages, as plssub does. Every pixel within MARGIN_PX (2) of a subpage's
edge must be the white background: a label, title or legend that runs off its panel -- off
the image or into the next panel -- leaves ink there. Exit 0 when clean; 1 with the first
offending edge of each panel on stdout. Standard library only (zlib, struct).
"""
import struct
import sys
import zlib


def read_png(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("%s: not a PNG" % path)
    pos, idat, hdr = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError("%s: only 8-bit RGB/RGBA, non-interlaced (got depth %d type %d)"
                         % (path, depth, ctype))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows, prev, p = [], bytearray(stride), 0
    for _ in range(height):
        ftype, line = raw[p], bytearray(raw[p + 1:p + 1 + stride])
        p += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pr) & 255
        rows.append(line)
        prev = line
    return width, height, bpp, rows


def main(argv):
    if len(argv) not in (4, 5):
        sys.stderr.write(__doc__)
        return 2
    path, cols, nrows = argv[1], int(argv[2]), int(argv[3])
    margin = int(argv[4]) if len(argv) == 5 else 2
    width, height, bpp, rows = read_png(path)

    def ink(x, y):
        px = rows[y][x * bpp:x * bpp + 3]
        return px[0] < 250 or px[1] < 250 or px[2] < 250

    bad = []
    for r in range(nrows):
        y0, y1 = r * height // nrows, (r + 1) * height // nrows
        for c in range(cols):
            x0, x1 = c * width // cols, (c + 1) * width // cols
            edges = {
                "top": [(x, y) for y in range(y0, y0 + margin) for x in range(x0, x1)],
                "bottom": [(x, y) for y in range(y1 - margin, y1) for x in range(x0, x1)],
                "left": [(x, y) for x in range(x0, x0 + margin) for y in range(y0, y1)],
                "right": [(x, y) for x in range(x1 - margin, x1) for y in range(y0, y1)],
            }
            for side, pts in edges.items():
                hit = next((pt for pt in pts if ink(*pt)), None)
                if hit is not None:
                    bad.append("%s: panel (col %d, row %d): ink on its %s edge at pixel %d,%d"
                               % (path, c + 1, r + 1, side, hit[0], hit[1]))
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
