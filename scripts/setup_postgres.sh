#!/usr/bin/env bash
# Installs and starts a PostgreSQL server for the audit-store tests. Filled in by the service work.
exit 0
