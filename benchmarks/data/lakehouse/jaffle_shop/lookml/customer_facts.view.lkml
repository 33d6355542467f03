view: customer_facts {
  sql_table_name: analytics.customers ;;

  dimension: customer_id {
    primary_key: yes
    type: number
    sql: ${TABLE}.customer_id ;;
  }
  dimension: customer_type {
    type: string
    sql: ${TABLE}.customer_type ;;
    description: "new or returning customer"
  }
  measure: average_lifetime_spend {
    type: average
    sql: ${TABLE}.lifetime_spend ;;
    description: "Average net lifetime spend per customer."
  }
}

view: store_facts {
  sql_table_name: analytics.locations ;;
  dimension: location_id {
    primary_key: yes
    type: number
    sql: ${TABLE}.location_id ;;
  }
  dimension: store_name {
    type: string
    sql: ${TABLE}.location_name ;;
    description: "Name of the store location."
  }
}
