#!/usr/bin/env python3
"""Writes the small synthetic seeds committed beside this script (seeds/<target>/), one folder per fuzz
target. Hand-made so the repo holds no real data; scripts/fuzz-seeds.sh adds real files from ../shared/data
at fuzz time. Run it again after changing it: python3 tests/fuzz/seeds/generate.py"""
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    os.makedirs(os.path.join(HERE, target), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(HERE, target, name), "wb") as f:
        f.write(data)


def png(width, height, bit_depth, colour_type, rows):
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    raw = b"".join(b"\0" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, bit_depth, colour_type, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


grey8 = png(4, 3, 8, 0, [bytes([0, 64, 128, 255])] * 3)
grey16 = png(4, 2, 16, 0, [struct.pack(">4H", 0, 256, 1000, 65535)] * 2)
rgb8 = png(2, 2, 8, 2, [bytes([255, 0, 0, 0, 255, 0])] * 2)
put("png", "grey8.png", grey8)
put("png", "grey16.png", grey16)
put("png", "rgb8.png", rgb8)
put("kitti_disparity", "kitti16.png", grey16)
put("kitti_disparity", "middlebury8.png", grey8)

put("pfm", "le1.pfm", b"Pf\n2 2\n-1.0\n" + struct.pack("<4f", 1.0, 2.5, float("inf"), 0.0))
put("pfm", "be3.pfm", b"PF\n1 2\n1.0\n" + struct.pack(">6f", 1, 2, 3, 4, 5, 6))

put("calib", "kitti_cam_to_cam.txt", "\0calib_time: 09-Jan-2012\n"
    "P_rect_02: 7.215377e+02 0.0 6.095593e+02 4.485728e+01 0.0 7.215377e+02 1.728540e+02 2.163791e-01 0.0 0.0 1.0 2.745884e-03\n"
    "P_rect_03: 7.215377e+02 0.0 6.095593e+02 -3.395242e+02 0.0 7.215377e+02 1.728540e+02 2.199936e+00 0.0 0.0 1.0 2.729905e-03\n")
put("calib", "kitti_object.txt", "\0P2: 721.5 0 609.5 44.8 0 721.5 172.8 0.2 0 0 1 0.003\n"
    "P3: 721.5 0 609.5 -339.5 0 721.5 172.8 2.2 0 0 1 0.003\n")
put("calib", "middlebury.txt", "\0cam0=[3997.684 0 1176.728; 0 3997.684 1011.728; 0 0 1]\n"
    "cam1=[3997.684 0 1307.839; 0 3997.684 1011.728; 0 0 1]\ndoffs=131.111\nbaseline=193.001\nwidth=2964\n"
    "height=1988\nndisp=280\n")
put("calib", "q.txt", "\0" + "1 0 0 -600\n0 1 0 -180\n0 0 0 721\n0 0 1.85 0\n")
put("calib", "pairs.txt", "\0focal_px=721.5, baseline_m=0.54, cx=609.5, cy=172.8, doffs=0\n")
put("calib", "tum.txt", "\0# fx fy cx cy\n525.0 525.0 319.5 239.5\n")
put("calib", "k9.txt", "\0" + "585 0 320\n0 585 240\n0 0 1\n")
put("calib", "stereo.yml", "\1%YAML:1.0\n---\nQ: !!opencv-matrix\n   rows: 4\n   cols: 4\n   dt: d\n"
    "   data: [ 1., 0., 0., -600., 0., 1., 0., -180., 0., 0., 0., 721., 0., 0., 1.85, 0. ]\n")
put("calib", "focal.xml", "\2<?xml version=\"1.0\"?>\n<opencv_storage>\n<focal_px>721.5</focal_px>\n"
    "<baseline_m>0.54</baseline_m>\n<cx>609.5</cx>\n</opencv_storage>\n")

put("ply", "ascii.ply", "ply\nformat ascii 1.0\ncomment synthetic\nelement vertex 3\nproperty float x\n"
    "property float y\nproperty float z\nproperty uchar red\nelement face 1\nproperty list uchar int vertex_indices\n"
    "end_header\n0 0 0 255\n1 0 0 128\n0 1 0 0\n3 0 1 2\n")
put("ply", "binary_le.ply", b"ply\nformat binary_little_endian 1.0\nelement vertex 2\nproperty float x\n"
    b"property float y\nproperty float z\nproperty double intensity\nend_header\n"
    + struct.pack("<3fd", 1, 2, 3, 0.5) + struct.pack("<3fd", 4, 5, 6, 0.25))
put("ply", "binary_be.ply", b"ply\nformat binary_big_endian 1.0\nelement vertex 1\nproperty float32 x\n"
    b"property float32 y\nproperty float32 z\nelement face 1\nproperty list uint8 uint32 vertex_indices\nend_header\n"
    + struct.pack(">3f", 1, 2, 3) + struct.pack(">B3I", 3, 0, 0, 0))

HEAD = ("# .PCD v0.7\nVERSION 0.7\nFIELDS x y z rgb\nSIZE 4 4 4 4\nTYPE F F F U\nCOUNT 1 1 1 1\nWIDTH 2\nHEIGHT 1\n"
        "VIEWPOINT 0 0 0 1 0 0 0\nPOINTS 2\nDATA ")
put("pcd", "ascii.pcd", HEAD + "ascii\n1 2 3 4278190335\nnan nan nan 0\n")
points = struct.pack("<3fI", 1, 2, 3, 0xFF0000FF) + struct.pack("<3fI", 4, 5, 6, 7)
put("pcd", "binary.pcd", HEAD.encode() + b"binary\n" + points)
# binary_compressed: fields stored column after column, then LZF; literal runs only (control byte = len - 1).
soa = b"".join(b"".join(points[p * 16 + f * 4:p * 16 + f * 4 + 4] for p in range(2)) for f in range(4))
lzf = b"".join(bytes([len(soa[i:i + 32]) - 1]) + soa[i:i + 32] for i in range(0, len(soa), 32))
put("pcd", "compressed.pcd", HEAD.encode() + b"binary_compressed\n" + struct.pack("<II", len(lzf), len(soa)) + lzf)


def npy(descr, shape, payload, fortran=False):
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload


put("npy", "f4.npy", npy("<f4", "(2, 4)", struct.pack("<8f", 1, 2, 3, 0.5, 4, 5, 6, 0.25)))
put("npy", "f8_be.npy", npy(">f8", "(1, 3)", struct.pack(">3d", 1, 2, 3)))
put("npy", "u2_fortran.npy", npy("<u2", "(2, 3)", struct.pack("<6H", 1, 2, 3, 4, 5, 6), fortran=True))

put("kitti_bin", "two.bin", struct.pack("<8f", 1, 2, 3, 0.5, -4, 5, -6, 1.0))

put("boxes_csv", "xyxy.csv", "\0image_id,x1,y1,x2,y2,score,label\n1,0,0,10,10,0.9,cat\n1,1,1,11,11,0.8,cat\n"
    "2,5,5,6,6,1e-3,dog\n")
put("boxes_csv", "rotated.csv", "\1cx,cy,w,h,angle,conf\n5,5,4,2,30,0.5\n5,5,4,2,-30,0.7\n")
put("boxes_csv", "bom_crlf.csv", b"\4\xef\xbb\xbfx,y,w,h,score\r\n0,0,1,1,0.5\r\n")
put("boxes_coco", "results.json", "\0[{\"image_id\": 1, \"category_id\": 3, \"bbox\": [1.5, 2, 30, 40], \"score\": 0.9},\n"
    " {\"image_id\": 1, \"category_id\": 3, \"bbox\": [2, 2, 30, 40], \"score\": 0.8, \"extra\": {\"a\": [1]}}]\n")
put("boxes_coco", "rotated.json", "\1[{\"image_id\": \"a\", \"bbox\": [5, 5, 4, 2, 45], \"score\": 0.5}]")
put("boxes_jsonl", "bbox.jsonl", "\0{\"image_id\": 1, \"bbox\": [0, 0, 10, 10], \"score\": 0.9}\n\n"
    "{\"image_id\": 2, \"x1\": 0, \"y1\": 0, \"x2\": 5, \"y2\": 5, \"conf\": 0.4, \"label\": \"x\"}\n")
put("boxes_mot", "det.txt", "\0" + "1,-1,794.2,47.5,71.2,174.8,67.5,-1,-1,-1\n1,-1,164.1,19.6,66.5,163.2,29.4,-1,-1,-1\n"
    "2,-1,875.4,39.9,25.3,145.0,19.6,-1,-1,-1\n")
put("boxes_voc", "image.txt", "\0person 0.9 10 20 110 220\ndog 0.5 1 2 3 4\ncar 1 0 0 5 5\n")

put("manifest", "pairs.jsonl", "{\"left\": \"a/l.png\", \"right\": \"a/r.png\", \"name\": \"a\", \"gt\": \"g.pfm\"}\n\n"
    "{\"input\": \"d.csv\", \"left\": \"x\", \"right\": \"y\"}\n")
put("manifest", "chained.jsonl", "{\"type\": \"item\", \"index\": 0, \"status\": \"ok\", \"output\": \"o.pfm\", \"input\": \"i\"}\n"
    "{\"type\": \"item\", \"status\": \"failed\", \"error\": \"x\"}\n{\"type\": \"summary\", \"ok\": 1}\n")
put("input_list", "tabs.txt", "# comment\nleft/0.png\tright/0.png\n\nleft/1.png  right/1.png\nsingle.csv\n")
put("config", "sgm.toml", "# settings\ndisparities = 64\ngt-scale = 4.0\ncalib = \"f=721,b=0.5\"\n"
    "emit = [\"disp\", \"depth\"]\nmedian = false\nthreads = 2\noverwrite = true\n[section]\nkey = 1\n")
put("config", "flags.ini", "verbose=2\nquiet=false\nno-median=true\nprogress=never\n")
