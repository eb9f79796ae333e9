"""Reading one object of the report bucket, where a missing object and a refused one differ.

S3 answers a missing key with 404 only to a caller allowed ``s3:ListBucket`` for it, and with
403 to any other (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html,
"Permissions"), so each role that reads keys that may be missing holds a ListBucket grant
whose s3:prefix condition covers them, and a 403 is named rather than read as "missing".
"""

from typing import Any

from botocore.exceptions import ClientError

#: How S3 says an object does not exist (GetObject's NoSuchKey, HeadObject's bare 404).
MISSING = frozenset({"404", "NoSuchKey", "NotFound"})


class ListBucketDeniedError(Exception):
    """S3 answered 403 for a report read: the key is missing and the role may not list it."""


def _missing(s3_error: ClientError, bucket: str, key: str) -> bool:
    """True where S3 said the object does not exist. S3 answers a missing key with 404 only
    to a caller allowed ``s3:ListBucket`` for it, with 403 to any other
    (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html, "Permissions"):
    a 403 is the role's ListBucket condition not covering the key, named here."""
    code = str(s3_error.response.get("Error", {}).get("Code"))
    if code in MISSING:
        return True
    if code in {"403", "AccessDenied"}:
        raise ListBucketDeniedError(
            f"s3://{bucket}/{key}: S3 answered 403; the object is missing and the role lacks "
            f"s3:ListBucket for it (its s3:prefix condition must cover {key!r}), or the role "
            "may not read it"
        ) from s3_error
    return False


def read_object(s3: Any, bucket: str, key: str) -> bytes | None:
    """The object's bytes, or None where it does not exist."""
    try:
        body: bytes = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as err:
        if _missing(err, bucket, key):
            return None
        raise
    return body


def object_exists(s3: Any, bucket: str, key: str) -> bool:
    try:
        s3.head_object(Bucket=bucket, Key=key)
    except ClientError as err:
        if _missing(err, bucket, key):
            return False
        raise
    return True
