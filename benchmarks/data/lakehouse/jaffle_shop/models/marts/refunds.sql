select
    payment_id as refund_id,
    order_id,
    created_at as refunded_at,
    coalesce(reason, 'other') as refund_reason,
    -amount as refunded_value
from {{ ref('stg_payments') }}
where amount < 0
