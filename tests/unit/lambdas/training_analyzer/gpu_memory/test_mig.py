from lambdas.training_analyzer.gpu_memory.mig import MIG_PROFILES, model_of, smallest_fit

GIB = 2**30
MIB = 2**20


def test_models_come_from_the_instance_family() -> None:
    assert model_of("p4d.24xlarge", 40_960 * MIB) == "A100 40GB"
    assert model_of("ml.p4de.24xlarge", 81_920 * MIB) == "A100 80GB"
    assert model_of("p5.4xlarge", 81_559 * MIB) == "H100 80GB"
    assert model_of("p5en.48xlarge", 143_771 * MIB) == "H200 141GB"
    # A family without MIG has no model, whatever its memory.
    assert model_of("g5.xlarge", 22_731 * MIB) is None


def test_a_capacity_far_from_every_mig_model_is_none() -> None:
    assert model_of(None, 46_068 * MIB) is None  # L40S
    assert model_of(None, 40_960 * MIB) == "A100 40GB"


def test_profiles_hold_their_fraction_of_the_devices_memory() -> None:
    a100 = 40_960 * MIB
    assert smallest_fit("A100 40GB", a100, 4 * GIB).name == "1g.5gb"  # type: ignore[union-attr]
    assert smallest_fit("A100 40GB", a100, 6 * GIB).name == "1g.10gb"  # type: ignore[union-attr]
    assert smallest_fit("A100 40GB", a100, 19 * GIB).name == "3g.20gb"  # type: ignore[union-attr]
    # More than half the memory needs the whole GPU: no profile.
    assert smallest_fit("A100 40GB", a100, 21 * GIB) is None
    assert MIG_PROFILES["H200 141GB"][0].name == "1g.18gb"


def test_an_80_gb_device_without_a_node_is_either_model() -> None:
    # A100 80GB and H100 80GB name their profiles alike: the profile is sure, the model is not.
    assert model_of(None, 81_559 * MIB) == "A100 80GB or H100 80GB"
    assert smallest_fit("A100 80GB or H100 80GB", 81_559 * MIB, 9 * GIB).name == "1g.10gb"  # type: ignore[union-attr]


def test_nvmls_name_of_a_device_says_its_model_before_anything_else() -> None:
    """OTel mode's DCGM series carry ``modelName``: the model without a node or a guess."""
    assert model_of(None, 81_559 * MIB, "NVIDIA H100 80GB HBM3") == "H100 80GB"
    assert model_of(None, 81_920 * MIB, "NVIDIA A100-SXM4-80GB") == "A100 80GB"
    assert model_of(None, 40_960 * MIB, "NVIDIA A100-SXM4-40GB") == "A100 40GB"
    assert model_of(None, 143_771 * MIB, "NVIDIA H200") == "H200 141GB"
    # The name wins over a node's family, and a GPU without MIG has none, whatever its memory.
    assert model_of("p4d.24xlarge", 81_559 * MIB, "NVIDIA H100 80GB HBM3") == "H100 80GB"
    assert model_of(None, 22_731 * MIB, "NVIDIA A10G") is None
    assert model_of(None, 46_068 * MIB, "NVIDIA L40S") is None


def test_a_profile_takes_one_of_the_instances_a_gpu_holds_of_it() -> None:
    # NVIDIA's MIG User Guide, "Supported MIG Profiles" (A100 and H100 tables, "Number of
    # Instances Available"): 7 x 1g.10gb, 4 x 1g.20gb, 3 x 2g.20gb, 2 x 3g.40gb, 1 x 4g.40gb.
    shares = {p.name: p.gpu_share for p in MIG_PROFILES["H100 80GB"]}
    assert shares == {
        "1g.10gb": 1 / 7,
        "1g.20gb": 1 / 4,
        "2g.20gb": 1 / 3,
        "3g.40gb": 1 / 2,
        "4g.40gb": 1.0,
        "7g.80gb": 1.0,
    }
