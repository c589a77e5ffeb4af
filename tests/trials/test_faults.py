"""What a failed fio run is: a fault of the device (an I/O error, the device gone) or not."""

from __future__ import annotations

import errno

import pytest

from tuner.trials.faults import (
    GONE,
    IO_ERROR,
    STALLED,
    TrialFault,
    classify,
    device_name,
    os_faults,
)

# fio 3.x's words when the device answers EIO (measured on the lab's `eio` region).
EIO_OUTPUT = (
    "fio: io_u error on file /dev/null: Input/output error: read offset=268435456, "
    "buflen=65536\nfio: pid=4242, err=5/file:io_u.c:1896, func=io_u error, "
    "error=Input/output error\n"
)


def test_an_eio_is_an_io_error() -> None:
    assert classify("/dev/null", EIO_OUTPUT) == IO_ERROR


def test_a_device_node_that_is_gone_is_gone_whatever_fio_said() -> None:
    assert classify("/dev/iotuner-no-such-loop", EIO_OUTPUT) == GONE
    assert classify("/dev/null", EIO_OUTPUT, ("iotuner-no-such-loop",)) == GONE


def test_a_bad_job_is_no_fault() -> None:
    assert classify("/dev/null", "fio: failed parsing bs=abc\n") is None


def test_the_message_is_one_line_naming_device_fault_trial_and_outcome() -> None:
    fault = TrialFault(device_name("/dev/loop3"), IO_ERROR, "fio: io_u error\n on file")
    assert str(fault) == "loop3: I/O error (fio: io_u error on file)"
    told = fault.at(7, "search").reported("tune", "settings restored, no plan written")
    assert str(told) == (
        "tune: loop3: I/O error during trial 7 (search) (fio: io_u error on file); "
        "settings restored, no plan written"
    )
    assert told.exit_code == 1
    assert str(TrialFault("/srv/data", STALLED, "fio did not finish within 126 s")) == (
        "/srv/data: trial stalled (fio did not finish within 126 s)"
    )
    with pytest.raises(ValueError):
        TrialFault("loop3", "weird", "x")


def test_the_devices_own_os_errors_are_faults_and_others_are_not() -> None:
    """The sync before a trial meets a failed device as EIO, like fio (measured: a killed lab
    server, once in two tunes)."""
    with pytest.raises(TrialFault) as err, os_faults("/dev/loop7"):
        raise OSError(errno.EIO, "Input/output error", "/dev/loop7")
    assert str(err.value) == "loop7: I/O error (Input/output error on /dev/loop7)"
    with pytest.raises(TrialFault) as err, os_faults("/dev/loop7", ("iotuner-no-such-loop",)):
        raise OSError(errno.EIO, "Input/output error", "/dev/loop7")
    assert err.value.kind == GONE
    with pytest.raises(PermissionError), os_faults("/dev/loop7"):
        raise PermissionError(errno.EACCES, "Permission denied", "/dev/loop7")
