"""The registry's errors: Confluent's error codes and messages.

Every error answers `{"error_code": code, "message": message}` with the HTTP status made of
the code's first three digits (40401 -> 404), as Confluent's Schema Registry does.
"""

from __future__ import annotations


class RegistryError(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message

    @property
    def status(self) -> int:
        code = str(self.error_code)
        return int(code[:3]) if len(code) > 3 else self.error_code


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(40401, f"Subject '{subject}' not found.")


def version_not_found(version: int) -> RegistryError:
    return RegistryError(40402, f"Version {version} not found.")


def schema_not_found(schema_id: int | None = None) -> RegistryError:
    if schema_id is None:
        return RegistryError(40403, "Schema not found")
    return RegistryError(40403, f"Schema {schema_id} not found")


def subject_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(
        40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently"
    )


def subject_not_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(
        40405, f"Subject '{subject}' was not deleted first before being permanently deleted"
    )


def version_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(
        40406,
        f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true to delete "
        "permanently",
    )


def version_not_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(
        40407,
        f"Subject '{subject}' Version {version} was not deleted first before being permanently "
        "deleted",
    )


def subject_config_not_found(subject: str) -> RegistryError:
    return RegistryError(
        40408, f"Subject '{subject}' does not have subject-level compatibility configured"
    )


def subject_mode_not_found(subject: str) -> RegistryError:
    return RegistryError(40409, f"Subject '{subject}' does not have subject-level mode configured")


def incompatible(message: str) -> RegistryError:
    return RegistryError(409, message)


def invalid_schema(message: str) -> RegistryError:
    return RegistryError(42201, message)


def invalid_version(text: str) -> RegistryError:
    return RegistryError(
        42202,
        f"The specified version '{text}' is not a valid version id. Allowed values are between "
        '[1, 2^31-1] and the string "latest"',
    )


def invalid_compatibility_level(level: object) -> RegistryError:
    return RegistryError(
        42203,
        f"Invalid compatibility level. Valid values are none, backward, forward, full, "
        f"backward_transitive, forward_transitive, and full_transitive: {level}",
    )


def invalid_mode(mode: object) -> RegistryError:
    return RegistryError(
        42204,
        f"Invalid mode. Valid values are READWRITE, READONLY, READONLY_OVERRIDE, IMPORT: {mode}",
    )


def operation_not_permitted(message: str) -> RegistryError:
    return RegistryError(42205, message)


def references_exist(message: str) -> RegistryError:
    return RegistryError(42206, message)


def bad_request(message: str) -> RegistryError:
    return RegistryError(400, message)
