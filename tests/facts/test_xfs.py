"""xfs_info's data-section geometry."""

from __future__ import annotations

from tuner.facts.xfs import XfsGeometry, parse_xfs_info, read_xfs_geometry

XFS_INFO = """\
meta-data=/dev/md0               isize=512    agcount=32, agsize=22888192 blks
         =                       sectsz=4096  attr=2, projid32bit=1
         =                       crc=1        finobt=1, sparse=1, rmapbt=0
         =                       reflink=1    bigtime=1 inobtcount=1 nrext64=0
data     =                       bsize=4096   blocks=732421632, imaxpct=5
         =                       sunit=128    swidth=384 blks
naming   =version 2              bsize=4096   ascii-ci=0, ftype=1
log      =internal log           bsize=4096   blocks=357627, version=2
         =                       sectsz=4096  sunit=1 blks, lazy-count=1
realtime =none                   extsz=4096   blocks=0, rtextents=0
"""


def test_data_section_geometry_in_bytes() -> None:
    # 128 and 384 blocks of 4 KiB: a 512 KiB chunk over three data disks.
    assert parse_xfs_info(XFS_INFO) == XfsGeometry(512 * 1024, 3 * 512 * 1024)


def test_unstriped_and_garbled_output() -> None:
    plain = XFS_INFO.replace("sunit=128    swidth=384", "sunit=0      swidth=0")
    assert parse_xfs_info(plain) == XfsGeometry(0, 0)
    assert parse_xfs_info("xfs_info: /data is not a mounted XFS filesystem") is None


def test_missing_xfs_info_is_unknown() -> None:
    assert read_xfs_geometry("/", command="xfs_info-not-installed-here") is None
