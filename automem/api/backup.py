"""Backup and restore (admin): GET /backup streams an archive, POST /admin/restore rebuilds a
store from one. The archive format is described in `automem.backup`, the restore in
`automem.restore`."""

from __future__ import annotations

from collections.abc import Iterator

from flask import Blueprint, Response, request, stream_with_context
from werkzeug.exceptions import RequestEntityTooLarge

from automem.api import respond, services
from automem.auth import require_tenant_admin, tenant_bound
from automem.backup import CHUNK, MEDIA_TYPE, archive_records, backup_header, gzip_lines
from automem.errors import Forbidden, PayloadTooLarge
from automem.models import RestoreQuery, parse
from automem.restore import restore_archive
from automem.tenant_restore import restore_into_tenant
from automem.tenants import check_tenant_name

bp = Blueprint("backup", __name__)


@bp.get("/backup")
@require_tenant_admin
def backup() -> tuple[Response, int]:
    """One gzip'd JSON-lines archive of graph and vectors, streamed as it is read: the whole
    store for the admin token (or one tenant's with `?tenant=`), the key's tenant for a
    tenant-admin key."""
    svc = services()
    tenant = tenant_bound()
    if tenant is None and "tenant" in request.args:
        tenant = check_tenant_name(request.args["tenant"])
    header = backup_header(svc, tenant)  # an unreachable store fails here, before the 200
    name = "automem-backup-" + header["created_at"][:19].replace(":", "").replace("-", "") + ".jsonl.gz"
    body = stream_with_context(gzip_lines(archive_records(svc, header)))
    response = Response(body, mimetype=MEDIA_TYPE)
    response.headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return response, 200


@bp.post("/admin/restore")
@require_tenant_admin
def restore() -> tuple[Response, int]:
    """The request body is the archive (any content type); it may exceed the normal body limit up
    to AUTOMEM_RESTORE_MAX_BYTES. The admin token restores the whole store, or imports into one
    tenant with `?tenant=`; a tenant-admin key imports its own tenant's archive into its tenant."""
    svc = services()
    query = parse(RestoreQuery, dict(request.args), svc.settings)
    request.max_content_length = svc.settings.restore_max_bytes
    chunks = _body_chunks(svc.settings.restore_max_bytes)
    bound = tenant_bound()
    if bound is not None and query.tenant not in (None, bound):
        raise Forbidden(
            f"a key of tenant {bound} imports into {bound} only", field="tenant", reason="insufficient_scope"
        )
    tenant = bound or (check_tenant_name(query.tenant) if query.tenant is not None else None)
    if tenant is None:
        return respond(restore_archive(svc, chunks, query.mode, query.vectors))
    return respond(restore_into_tenant(svc, chunks, tenant, query.mode, own_archives_only=bound is not None))


def _body_chunks(limit: int) -> Iterator[bytes]:
    try:
        while chunk := request.stream.read(CHUNK):
            yield chunk
    except RequestEntityTooLarge as exc:
        raise PayloadTooLarge(
            f"the archive exceeds AUTOMEM_RESTORE_MAX_BYTES ({limit} bytes)", field="body"
        ) from exc
