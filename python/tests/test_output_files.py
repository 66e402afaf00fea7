"""output_files: a checked output's file, from the job that made it to the trusted comparison."""

import zipfile
from collections import OrderedDict

import pytest
import torch

from cuda_agent_harness.output_files import load_output, no_checksums, save_output


def nested_output() -> tuple:
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    return (base.t(),  # not contiguous: its strides travel with it
            {"mask": base > 3, "empty": torch.empty(0, 3)},
            [torch.tensor([1, 2, 3], dtype=torch.int64), 7, "label"])


def test_an_output_comes_back_as_it_was_saved(tmp_path):
    output = nested_output()
    path = str(tmp_path / "output_0.pt")
    save_output(output, path)
    back = load_output(path)
    assert type(back) is tuple and type(back[1]) is dict and type(back[2]) is list
    assert torch.equal(back[0], output[0]) and back[0].stride() == output[0].stride()
    assert back[1]["mask"].dtype == torch.bool and torch.equal(back[1]["mask"], output[1]["mask"])
    assert back[1]["empty"].shape == (0, 3)
    assert torch.equal(back[2][0], output[2][0]) and back[2][1:] == [7, "label"]


def test_the_reader_maps_the_file_instead_of_reading_it(tmp_path):
    path = tmp_path / "output_0.pt"
    save_output(torch.ones(1 << 16), str(path))
    back = load_output(str(path))
    address = back.data_ptr()
    mapped_from = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if start <= address < end:
                mapped_from.append(fields[-1])
    assert mapped_from == [str(path)]
    assert back.sum().item() == 1 << 16


def test_without_checksums_the_records_carry_no_crc_and_still_load(tmp_path):
    checked, unchecked = tmp_path / "a.pt", tmp_path / "b.pt"
    value = OrderedDict(x=torch.randn(1000))
    torch.serialization.set_crc32_options(True)  # torch's default (jobs run in this process turn it off)
    save_output(value, str(checked))
    no_checksums()
    try:
        save_output(value, str(unchecked))
    finally:
        torch.serialization.set_crc32_options(True)
    data = [i for i in zipfile.ZipFile(unchecked).infolist() if i.filename.endswith("/data/0")]
    assert data and data[0].CRC == 0
    assert [i.CRC for i in zipfile.ZipFile(checked).infolist() if i.filename.endswith("/data/0")] != [0]
    assert torch.equal(load_output(str(unchecked))["x"], value["x"])


def test_a_file_that_is_not_torch_saves_zip_format_is_refused(tmp_path):
    legacy = tmp_path / "legacy.pt"
    torch.save(torch.ones(4), str(legacy), _use_new_zipfile_serialization=False)
    with pytest.raises(Exception):  # noqa: B017 - whatever torch.load raises on a legacy file
        load_output(str(legacy))
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a tensor")
    with pytest.raises(Exception):  # noqa: B017 - whatever torch.load raises on junk
        load_output(str(junk))


@pytest.mark.gpu
def test_a_cuda_output_goes_through_pinned_memory_and_comes_back_equal(tmp_path, monkeypatch):
    from cuda_agent_harness import output_files
    seen = []
    original = output_files._to_host
    monkeypatch.setattr(output_files, "_to_host", lambda t: seen.append(original(t)) or seen[-1])
    output = (torch.randn(1 << 20, device="cuda"), torch.randn(3, 5, device="cuda").t())
    path = str(tmp_path / "output_0.pt")
    save_output(output, path)
    assert all(t.is_pinned() for t in seen)
    back = load_output(path)
    assert torch.equal(back[0], output[0].cpu()) and torch.equal(back[1], output[1].cpu())
    assert back[1].stride() == output[1].stride()
