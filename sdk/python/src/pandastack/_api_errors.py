"""The REST API's error codes and the HTTP status each is sent with
(docs/api.md, "Errors"; a code with two statuses has its first here).

Generated from src/daemon/api_errors.def by scripts/api_errors.py: do not edit.
"""
from typing import Dict

API_ERROR_STATUS: Dict[str, int] = {
    "invalid_json": 400,
    "unknown_field": 400,
    "missing_field": 400,
    "invalid_field": 400,
    "invalid_path": 400,
    "invalid_query": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "permission_denied": 403,
    "not_found": 404,
    "sandbox_not_found": 404,
    "key_not_found": 404,
    "template_not_found": 404,
    "file_not_found": 404,
    "context_not_found": 404,
    "command_not_found": 404,
    "method_not_allowed": 405,
    "sandbox_not_running": 409,
    "is_a_directory": 409,
    "not_a_directory": 409,
    "already_exists": 409,
    "directory_not_empty": 409,
    "template_stale": 409,
    "build_in_progress": 409,
    "admin_key": 409,
    "command_busy": 409,
    "body_too_large": 413,
    "too_many_sandboxes": 429,
    "too_many_contexts": 429,
    "too_many_commands": 429,
    "internal": 500,
    "template_invalid": 500,
    "vm_start_failed": 500,
    "agent_error": 500,
    "context_start_failed": 500,
    "agent_unavailable": 502,
    "host_full": 503,
    "agent_busy": 503,
    "agent_timeout": 504,
    "no_space": 507,
}
