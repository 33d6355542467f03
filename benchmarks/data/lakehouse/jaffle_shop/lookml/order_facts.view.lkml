view: order_facts {
  sql_table_name: analytics.orders ;;
  description: "Looker view over the orders mart."

  dimension: order_id {
    primary_key: yes
    type: number
    sql: ${TABLE}.order_id ;;
  }
  dimension: customer_id {
    type: number
    hidden: yes
    sql: ${TABLE}.customer_id ;;
  }
  dimension: location_id {
    type: number
    hidden: yes
    sql: ${TABLE}.location_id ;;
  }
  dimension_group: ordered {
    type: time
    timeframes: [date, week, month, quarter, year]
    sql: ${TABLE}.ordered_at ;;
    description: "When the order was placed."
  }
  dimension: is_refunded {
    type: yesno
    sql: ${TABLE}.is_refunded ;;
  }
  measure: total_net_sales {
    type: sum
    value_format_name: usd
    sql: ${TABLE}.net_amount ;;
    description: "Net sales in Looker: paid amount minus refunds, tax included."
  }
  measure: refunded_order_count {
    type: count
    filters: [is_refunded: "yes"]
    description: "Orders with at least one refund."
  }
  measure: looker_order_count {
    type: count
    description: "Number of orders."
  }
}
