"""Reading and writing the package's file formats (instances and results)."""

from .instance_file import (
    dumps_instance,
    instance_from_dict,
    instance_to_dict,
    load_instance,
    save_instance,
)
from .result_file import load_result, result_from_dict, save_result
from .jsonfile import check_destination, parse_json, read_json, write_atomic
from .schema import load_schema, validate

__all__ = [
    "dumps_instance",
    "instance_from_dict",
    "instance_to_dict",
    "load_instance",
    "save_instance",
    "load_result",
    "result_from_dict",
    "save_result",
    "parse_json",
    "read_json",
    "write_atomic",
    "check_destination",
    "load_schema",
    "validate",
]
