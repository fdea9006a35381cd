"""The prepare stage's spec: every knob it reads comes from the validated config once."""

import dataclasses

import pytest
from catbench.core.infra.config import validate
from catbench.prepare.chunker import Chunker
from catbench.prepare.spec import PoolSetup, PrepareSpec


def test_the_spec_holds_the_configs_values():
    cfg = validate({"seed": 5, "run": "r1", "catalog": {"id_layout": "spatial", "patch": {"objects": 900}},
                    "partition": {"num_stripes": 40, "index_files": 3},
                    "index": {"order": "chunk", "sort_memory": "2GB", "file": {"batch_rows": 1000}}})
    spec = PrepareSpec.of(cfg)
    assert (spec.run, spec.catalog.seed, spec.catalog.id_layout, spec.catalog.patch.objects) == ("r1", 5, "spatial", 900)
    assert spec.partition.geometry.num_stripes == 40 and spec.partition.index_files == 3
    assert Chunker.of(spec.partition.geometry).num_chunks > 0
    assert (spec.index.order, spec.index.sort_memory, spec.index.file.batch_rows) == ("chunk", "2GB", 1000)
    assert spec.index.file.roles() == {"objectId": "objectId", "ra": "ra", "dec": "dec"}
    assert spec.catalog.patch_file.flux_unit == "erg" and spec.catalog.patch_file.paths == ()
    assert spec.catalog.section is cfg["catalog"]   # what core/sky/copies reads
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.run = "other"


def test_the_pool_setup_is_the_working_set_jobs_json():
    cfg = validate({"server": {"settings": {"innodb_buffer_pool_size": "256M"}},
                    "load": {"settings": {"innodb_page_size": "8K"}}, "index": {"source": "file"}})
    setup = PoolSetup.of(cfg)
    assert setup.as_dict() == {"pool_bytes": 256 << 20, "page_bytes": 8192, "id_layout": "own", "order": "generation"}
    assert PoolSetup(**setup.as_dict()) == setup
