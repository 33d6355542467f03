-- Finance tables exported from the warehouse catalog.
CREATE TABLE finance.invoices (
    invoice_id BIGINT NOT NULL COMMENT 'Invoice number issued to a wholesale customer',
    customer_id BIGINT COMMENT 'Wholesale customer billed',
    issued_on DATE COMMENT 'Date the invoice was issued',
    amount_due DECIMAL(12, 2) COMMENT 'Amount owed including VAT',
    paid_on DATE COMMENT 'Date payment arrived; null while unpaid'
) COMMENT = 'One row per wholesale invoice';

CREATE TABLE finance.gl_entries (
    entry_id BIGINT NOT NULL COMMENT 'General ledger entry id',
    account_code VARCHAR(20) COMMENT 'Chart-of-accounts code, e.g. 4000 for revenue',
    posted_at TIMESTAMP COMMENT 'When the entry was posted',
    debit DECIMAL(14, 2) COMMENT 'Debit amount',
    credit DECIMAL(14, 2) COMMENT 'Credit amount'
) COMMENT = 'General ledger lines posted by the ERP';

CREATE VIEW finance.unpaid_invoices AS
SELECT invoice_id, customer_id, amount_due, issued_on
FROM finance.invoices
WHERE paid_on IS NULL;
